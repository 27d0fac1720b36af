-- users workload (seeds 002 and 004): a deterministic 10,000-row table.
--
-- Every column is a pure function of id, so the table is byte-identical on every load and
-- on every machine (created_at is an absolute UTC instant, not now()).
DROP TABLE IF EXISTS pgarena.posts;  -- posts.sql's table references users (issue 13)
DROP TABLE IF EXISTS pgarena.users;
CREATE TABLE pgarena.users (
    id integer PRIMARY KEY,
    username varchar(50) NOT NULL UNIQUE,
    full_name varchar(100) NOT NULL,
    email varchar(255) NOT NULL UNIQUE,
    age smallint NOT NULL,
    created_at timestamptz NOT NULL
);
INSERT INTO pgarena.users (id, username, full_name, email, age, created_at)
SELECT
    g.i,
    'user' || lpad(g.i::text, 5, '0'),
    (ARRAY['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken',
           'Margaret', 'Niklaus', 'Radia', 'Tony'])[1 + g.i % 12]
        || ' ' ||
    (ARRAY['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen',
           'Thompson', 'Hamilton', 'Wirth', 'Perlman', 'Hoare', 'Ritchie'])[1 + (g.i / 12) % 13],
    'user' || lpad(g.i::text, 5, '0') || '@example.com',
    (18 + (g.i * 7) % 63)::smallint,
    timestamptz '2024-01-01 00:00:00+00' + g.i * interval '37 minutes 11.5 seconds'
FROM generate_series(1, 10000) AS g(i);
ANALYZE pgarena.users;
