-- graphql-nested / users-posts workloads (issue 13): 10 posts per user, 100,000 rows.
--
-- Like users.sql every column is a pure function of id. Post g belongs to user 1 + (g * 7919) % 10000:
-- 7919 is coprime with 10000, so each block of 10,000 consecutive ids gives every user exactly one post,
-- and a user's ten posts are spread over the table (ids g, g + 10000, ...): "a user's first five posts"
-- needs the (user_id, id) index, as it would in a real blog, not a lucky physical order.
-- Needs pgarena.users (users.sql) first.
DROP TABLE IF EXISTS pgarena.posts;
CREATE TABLE pgarena.posts (
    id integer PRIMARY KEY,
    user_id integer NOT NULL REFERENCES pgarena.users (id),
    title varchar(200) NOT NULL,
    body text NOT NULL,
    created_at timestamptz NOT NULL
);
INSERT INTO pgarena.posts (id, user_id, title, body, created_at)
SELECT
    g.i,
    1 + (g.i * 7919) % 10000,
    (ARRAY['Notes on', 'Thoughts about', 'A guide to', 'Why I like', 'Benchmarking', 'Debugging'])[1 + g.i % 6]
        || ' ' ||
    (ARRAY['PostgreSQL', 'GraphQL', 'indexes', 'connection pools', 'JSON', 'latency', 'N+1 queries'])[1 + (g.i / 6) % 7]
        || ' #' || g.i,
    repeat('Lorem ipsum dolor sit amet. ', 1 + g.i % 5),
    timestamptz '2024-02-01 00:00:00+00' + g.i * interval '5 minutes 3.25 seconds'
FROM generate_series(1, 100000) AS g(i);
CREATE INDEX posts_user_id_id_idx ON pgarena.posts (user_id, id);
ANALYZE pgarena.posts;
