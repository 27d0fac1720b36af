module pgarena.invalid/wire

go 1.25.0

require github.com/jackc/pgx/v5 v5.12.0
