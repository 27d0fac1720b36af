-- FraiseQL's read model over pgarena's tables, for the rust-fraiseql stack. Idempotent: the run command
-- applies it with psql before it starts the server.
--
-- FraiseQL reads an entity as one jsonb column `data` (snake_case keys) of a view, plus the native `id`
-- column it orders a page by. v_user is a plain read-only view over pgarena's tables (users, posts); like
-- the tables it is named unqualified, so it is created in the first schema of the role's search path,
-- pgarena, where the stacks' role may create objects (it may not create schemas when pgarena runs
-- against a --database-url). pgarena's tables are not changed.
--
-- NOTE: FraiseQL serves a nested list out of its parent's `data` (GraphQL `posts` and the REST select
-- both read the key `posts` below) and has no arguments on nested fields, so the page of posts is the
-- view's: each user's first five posts by id, read through the (user_id, id) index.
CREATE OR REPLACE VIEW v_user AS
SELECT
    u.id,
    jsonb_build_object(
        'id', u.id,
        'username', u.username,
        'full_name', u.full_name,
        'email', u.email,
        'age', u.age,
        'created_at', u.created_at,
        'posts', (
            SELECT coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'title', p.title) ORDER BY p.id), '[]'::jsonb)
            FROM (SELECT id, title FROM posts WHERE user_id = u.id ORDER BY id LIMIT 5) AS p
        )
    ) AS data
FROM users AS u;
