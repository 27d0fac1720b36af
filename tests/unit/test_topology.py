"""Topology files (config/topology.py): the examples load, and every mistake is one line naming the key."""

from __future__ import annotations

import pytest

from pgarena.config.topology import TopologyError, load_topology
from tests.conftest import PROJECT_DIR


def _write(tmp_path, text):
    path = tmp_path / "topology.toml"
    path.write_text(text)
    return path


def test_the_examples_load():
    netns = load_topology(PROJECT_DIR / "examples" / "topology-netns.toml")
    assert netns.roles.generators == ["gen1", "gen2"] and netns.netns_hosts == ["gen1", "gen2", "app", "db"]
    hosts = load_topology(PROJECT_DIR / "examples" / "topology-hosts.toml")
    assert hosts.kind("app") == "ssh" and hosts.hosts["app"].reach_address == "192.0.2.20"
    assert hosts.hosts["here"].reach_address == "192.0.2.10" and hosts.netns_hosts == []


@pytest.mark.parametrize(("text", "needle"), [
    ('[hosts.a]\nkind = "netns"\n[roles]\ngenerators = ["a"]\nstack = "b"\ndatabase = "a"\n',
     "roles.stack: no host 'b'"),
    ('[hosts.app]\nkind = "netns"\n[roles]\ngenerators = ["app"]\nstack = "ap"\ndatabase = "app"\n',
     "did you mean 'app'"),
    ('[hosts.a]\nkind = "ssh"\n[roles]\ngenerators = ["a"]\nstack = "a"\ndatabase = "a"\n',
     "an ssh host needs 'destination'"),
    ('[hosts.a]\nkind = "ssh"\ndestination = "u@h"\n[hosts.b]\nkind = "local"\n'
     '[roles]\ngenerators = ["b"]\nstack = "a"\ndatabase = "a"\n', "roles.database: host 'a' is ssh"),
    ('[hosts.a]\nkind = "netns"\naddress = "10.0.0.1"\n[roles]\ngenerators = ["a"]\nstack = "a"\ndatabase = "a"\n',
     "assigned by pgarena"),
    ('[hosts.a]\nkind = "local"\naddress = "here"\n[roles]\ngenerators = ["a"]\nstack = "a"\ndatabase = "a"\n',
     "not an IP address"),
    ('[hosts.Gen]\nkind = "local"\n[roles]\ngenerators = ["Gen"]\nstack = "Gen"\ndatabase = "Gen"\n',
     "host name 'Gen'"),
    ('[hosts.a]\nkind = "local"\n[roles]\ngenerators = ["a", "a"]\nstack = "a"\ndatabase = "a"\n', "each host once"),
    ('[hosts.a]\nkind = "local"\ncolour = 1\n[roles]\ngenerators = ["a"]\nstack = "a"\ndatabase = "a"\n',
     "hosts.a.colour: unknown key"),
    ('[hosts.a]\nkind = "local"\n', "roles: missing"),
    ('[hosts.a\n', "not valid TOML"),
])
def test_mistakes_name_the_file_and_key(tmp_path, text, needle):
    path = _write(tmp_path, text)
    with pytest.raises(TopologyError, match=needle) as caught:
        load_topology(path)
    assert str(path) in str(caught.value)


def test_a_generator_may_live_on_an_ssh_host_with_k6(tmp_path):
    from pgarena.config.profiles import build_config

    path = _write(tmp_path, '[hosts.far]\nkind = "ssh"\ndestination = "u@192.0.2.5"\n[hosts.here]\nkind = "local"\n'
                            '[roles]\ngenerators = ["far"]\nstack = "here"\ndatabase = "here"\n')
    assert load_topology(path).kind("far") == "ssh"
    assert build_config(project_dir=tmp_path, overrides={"topology": str(path)}).engine == "k6"
    with pytest.raises(ValueError, match="SSH host .far. needs --engine k6"):
        build_config(project_dir=tmp_path, overrides={"topology": str(path), "engine": "oha"})


def test_run_options_refuse_what_a_topology_cannot_do(tmp_path):
    from pgarena.config.profiles import build_config

    two = str(PROJECT_DIR / "examples" / "topology-netns.toml")
    with pytest.raises(ValueError, match="2 generators need --engine k6"):
        build_config(project_dir=tmp_path, overrides={"topology": two, "engine": "oha"})
    assert build_config(project_dir=tmp_path, overrides={"topology": two, "engine": "k6"}).topology == two
    assert build_config(project_dir=tmp_path, overrides={"topology": two}).engine == "k6"  # chosen for 2 generators
    with pytest.raises(ValueError, match="name them in the file"):
        build_config(project_dir=tmp_path, overrides={"topology": two, "generators": 2})
    with pytest.raises(ValueError, match="not both"):
        build_config(project_dir=tmp_path, overrides={"topology": two, "engine": "k6", "netns": True})
    with pytest.raises(ValueError, match="cannot read"):
        build_config(project_dir=tmp_path, overrides={"topology": str(tmp_path / "nope.toml")})


def test_your_own_database_instead_of_the_managed_one(tmp_path):
    from pgarena.config.profiles import build_config

    url = "postgresql://u:p@192.0.2.9:5432/bench"
    without = _write(tmp_path, '[hosts.far]\nkind = "ssh"\ndestination = "u@192.0.2.5"\n[hosts.here]\nkind = "local"\n'
                               '[roles]\ngenerators = ["here"]\nstack = "far"\n')
    assert load_topology(without).roles.database is None
    assert build_config(project_dir=tmp_path, overrides={"topology": str(without), "database_url": url}).topology
    with pytest.raises(ValueError, match="roles.database is missing"):
        build_config(project_dir=tmp_path, overrides={"topology": str(without)})
    with pytest.raises(ValueError, match="leave roles.database out of the file, or drop --database-url"):
        build_config(project_dir=tmp_path, overrides={
            "topology": str(PROJECT_DIR / "examples" / "topology-hosts.toml"), "database_url": url})
