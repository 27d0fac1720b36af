"""The pure parts of system/netns.py and system/netns_plan.py: subnet choice, names, the owner alias, the state file."""

from __future__ import annotations

import ipaddress
import json
import os

import psutil
import pytest

from pgarena.system import netns, netns_plan
from pgarena.system.netns_plan import NetnsError, Topology

# `ip -4 -j route show table all` and `ip -4 -j addr show` of the machine this was written on.
ROUTES = json.loads(
    '[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},'
    '{"dst":"192.0.2.0/24","dev":"eth0","protocol":"kernel","scope":"link","prefsrc":"192.0.2.2","flags":[]},'
    '{"type":"local","dst":"127.0.0.0/8","dev":"lo","table":"local","protocol":"kernel","scope":"host",'
    '"prefsrc":"127.0.0.1","flags":[]},'
    '{"type":"local","dst":"127.0.0.1","dev":"lo","table":"local","protocol":"kernel","scope":"host",'
    '"prefsrc":"127.0.0.1","flags":[]},'
    '{"type":"broadcast","dst":"192.0.2.255","dev":"eth0","table":"local","protocol":"kernel","scope":"link",'
    '"prefsrc":"192.0.2.2","flags":[]}]')
ADDRESSES = json.loads(
    '[{"ifindex":1,"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},'
    '{"ifindex":4,"ifname":"eth0","addr_info":[{"family":"inet","local":"192.0.2.2","prefixlen":24},'
    '{"family":"inet6","local":"fd00::2","prefixlen":64}]}]')

ROLES = ["generator", "stack", "database"]


def net(text: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(text)


def test_host_networks_reads_routes_and_addresses_but_not_the_default_route():
    found = netns_plan.host_networks(ROUTES, ADDRESSES)
    assert found == sorted({net("127.0.0.0/8"), net("127.0.0.1/32"), net("192.0.2.0/24"),
                            net("192.0.2.255/32")})
    assert net("0.0.0.0/0") not in found


def test_host_networks_skips_ipv6_routes():
    assert netns_plan.host_networks([{"dst": "fd00::/64"}, {"dst": "10.1.0.0/16"}], []) == [net("10.1.0.0/16")]


def test_first_free_subnet_when_the_host_uses_nothing_of_the_pool():
    assert netns_plan.choose_subnet(netns_plan.host_networks(ROUTES, ADDRESSES)) == net("10.213.0.0/24")


def test_subnet_avoids_routes_and_addresses_in_the_pool():
    taken = [net("10.213.0.0/23"), net("10.213.2.7/32"), net("10.213.4.0/24")]
    assert netns_plan.choose_subnet(taken) == net("10.213.3.0/24")


def test_subnet_avoids_a_wider_route_that_covers_the_pool():
    pool = net("10.213.0.0/22")
    with pytest.raises(NetnsError, match="overlaps a route or address"):
        netns_plan.choose_subnet([net("10.0.0.0/8")], pool)
    assert netns_plan.choose_subnet([net("10.213.0.0/23")], pool) == net("10.213.2.0/24")


def test_new_prefixes_are_recognisable_and_distinct():
    prefixes = {netns_plan.new_prefix() for _ in range(50)}
    assert len(prefixes) == 50
    for prefix in prefixes:
        assert prefix.startswith("pga-") and len(prefix) == netns_plan.MAX_PREFIX_LENGTH
        int(prefix[4:], 16)


def test_plan_names_addresses_and_interface_lengths():
    topology = netns_plan.plan(ROLES, "pga-1a2b3c", net("10.213.7.0/24"), owner_pid=42, owner_start_time=1.5)
    assert topology.namespaces == {"generator": "pga-1a2b3c-gen", "stack": "pga-1a2b3c-stk",
                                   "database": "pga-1a2b3c-db"}
    assert topology.addresses == {"generator": "10.213.7.1", "stack": "10.213.7.2", "database": "10.213.7.3"}
    assert topology.hub == "pga-1a2b3c-hub" and topology.bridge == "pga-1a2b3c-br"
    assert topology.all_namespaces() == ["pga-1a2b3c-gen", "pga-1a2b3c-stk", "pga-1a2b3c-db", "pga-1a2b3c-hub"]
    interfaces = [topology.bridge] + [n for link in topology.links for n in (link.interface, link.hub_port)]
    assert max(len(name) for name in interfaces) <= 15  # IFNAMSIZ - 1
    assert all(netns_plan.run_of(name) == "pga-1a2b3c" for name in interfaces + topology.all_namespaces())


def test_plan_other_roles_use_their_first_letters():
    topology = netns_plan.plan(["stack", "database", "proxy", "cache2", "gen1", "gen2", "app"], "pga-000000",
                          net("10.213.0.0/24"), owner_pid=1)
    assert [link.namespace for link in topology.links] == ["pga-000000-stk", "pga-000000-db", "pga-000000-prx",
                                                           "pga-000000-ca2", "pga-000000-ge1", "pga-000000-ge2",
                                                           "pga-000000-app"]


@pytest.mark.parametrize(("roles", "prefix", "needle"), [
    ([], "pga-000000", "at least one role"),
    (["stack", "stack"], "pga-000000", "share the name"),
    (["cache", "cachee"], "pga-000000", "share the name"),
    (["database", "db"], "pga-000000", "share the name"),
    (["hub"], "pga-000000", "share the name"),
    (["Stack"], "pga-000000", "lower-case"),
    (["stack"], "pga-00000000", "at most 10"),
    (["stack"], "pga_0", "at most 10"),
    (["stack"], "pga-", "at most 10"),
])
def test_plan_refuses_bad_roles_and_prefixes(roles, prefix, needle):
    with pytest.raises(ValueError, match=needle):
        netns_plan.plan(roles, prefix, net("10.213.0.0/24"), owner_pid=1)


def test_owner_alias_round_trip():
    alias = netns_plan.owner_alias(1234, 1700000000.123456)
    assert len(alias) < 256  # IFALIASZ
    assert netns_plan.parse_owner_alias(alias) == {"pid": 1234, "start_time": 1700000000.123456}
    assert netns_plan.parse_owner_alias(None) is None
    assert netns_plan.parse_owner_alias("someone else's bridge") is None


def test_state_file_round_trip(tmp_path):
    path = tmp_path / "run" / "netns.json"
    topology = netns_plan.plan(ROLES, "pga-abcdef", net("10.213.5.0/24"), owner_pid=99, owner_start_time=12.25,
                          state_file=path)
    netns_plan.write_state(path, topology)
    assert netns_plan.read_state(path) == topology
    data = json.loads(path.read_text())
    assert data["version"] == netns_plan.STATE_VERSION
    assert data["owner"] == {"pid": 99, "start_time": 12.25}
    assert data["roles"]["database"]["address"] == "10.213.5.3"
    assert [p.name for p in path.parent.iterdir()] == ["netns.json"]  # no temporary file left


def test_as_dict_is_json_and_from_dict_inverts_it():
    topology = netns_plan.plan(ROLES, "pga-abcdef", net("10.213.5.0/24"), owner_pid=7)
    data = json.loads(json.dumps(topology.as_dict()))
    assert list(data["roles"]) == ROLES  # order kept
    again = Topology.from_dict(data)
    assert again.links == topology.links and again.subnet == topology.subnet and again.owner_pid == 0


def test_missing_state_file_is_none_and_a_foreign_one_an_error(tmp_path):
    assert netns_plan.read_state(tmp_path / "absent.json") is None
    bad = tmp_path / "netns.json"
    bad.write_text('{"version": 99}')
    with pytest.raises(NetnsError, match="not one pgarena wrote"):
        netns_plan.read_state(bad)
    bad.write_text("not json")
    with pytest.raises(NetnsError, match="not one pgarena wrote"):
        netns_plan.read_state(bad)


def test_reap_state_file_without_a_file_does_nothing(tmp_path):
    assert netns.reap_state_file(tmp_path / "netns.json") == []


def test_reap_state_file_refuses_a_live_owner(tmp_path, monkeypatch):
    parent = os.getppid()  # alive, and not this process
    path = tmp_path / "netns.json"
    netns_plan.write_state(path, netns_plan.plan(ROLES, "pga-abcdef", net("10.213.5.0/24"), owner_pid=parent,
                                       owner_start_time=psutil.Process(parent).create_time()))
    monkeypatch.setattr(netns, "_remove", lambda *a, **k: pytest.fail("must not remove a live run's namespaces"))
    with pytest.raises(netns_plan.NetnsInUse, match=f"pid {parent}"):
        netns.reap_state_file(path)
    assert path.exists()


def test_exec_prefix_enters_the_role_namespace():
    topology = netns_plan.plan(ROLES, "pga-abcdef", net("10.213.5.0/24"), owner_pid=7)
    prefix = netns.exec_prefix(topology, "database")
    assert os.path.basename(prefix[0]) == "ip" and prefix[1:] == ["netns", "exec", "pga-abcdef-db"]
    with pytest.raises(KeyError, match="no role 'proxy'"):
        netns.exec_prefix(topology, "proxy")


def test_available_says_why_without_root(monkeypatch):
    monkeypatch.setattr(netns, "_ip_binary", lambda: "/usr/sbin/ip")
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.available() == "creating network namespaces needs root (running as uid 1000)"


def test_available_says_why_without_ip(monkeypatch):
    monkeypatch.setattr(netns, "_ip_binary", lambda: None)
    assert "no `ip` command" in netns.available()


def test_error_names_the_command_and_its_stderr():
    error = NetnsError("`ip` failed with exit code 2", command=["ip", "netns", "add", "x"],
                       stderr="Cannot create namespace file: File exists\n")
    assert str(error) == ("`ip` failed with exit code 2 (command: ip netns add x): "
                          "Cannot create namespace file: File exists")
    assert error.stderr == "Cannot create namespace file: File exists"


def test_plan_with_a_host_link_gives_the_host_the_last_address():
    topology = netns_plan.plan(ROLES, "pga-1a2b3c", net("10.213.7.0/24"), owner_pid=1, host_link=True)
    assert topology.host_address == "10.213.7.254"
    assert topology.host_interface == "pga-1a2b3c-hst" and topology.host_hub_port == "pga-1a2b3c-hhst"
    assert len(topology.host_hub_port) <= 15
    again = Topology.from_dict(json.loads(json.dumps(topology.as_dict())))
    assert again.host_address == "10.213.7.254"
    plain = netns_plan.plan(ROLES, "pga-1a2b3c", net("10.213.7.0/24"), owner_pid=1)
    assert plain.host_address is None and plain.host_interface is None and "host" not in plain.as_dict()


def test_plan_refuses_a_role_named_like_the_host_link():
    with pytest.raises(ValueError, match="share the name"):
        netns_plan.plan(["hst"], "pga-000000", net("10.213.0.0/24"), owner_pid=1, host_link=True)
