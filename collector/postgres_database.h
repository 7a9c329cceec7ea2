#pragma once
// SqlDatabase on PostgreSQL through libpqxx (OpenPostgresDatabase in sql_database.h): one
// connection (client encoding UTF8), each distinct SQL text prepared once on the server and cached
// by its text (bounded), explicit BEGIN/COMMIT/ROLLBACK for Begin/Commit/Rollback.
//
// Parameters are sent as text and PostgreSQL infers each one's type from its context (the column it
// is compared with or stored into). Where the context says nothing, e.g. a select-list `SELECT $1`
// or `SELECT $1 + $2`, PostgreSQL takes it as text or refuses the statement: write
// `CAST($1 AS BIGINT)` (portable; SQLite accepts it too). For the same reason every parameter
// passed must appear in the statement (SQLite ignores unused ones; PostgreSQL refuses them).
//
// Errors: a lost or refused connection is kUnavailable "store: ..." and the object stays unusable
// (every later call answers the same; the caller opens a new one); anything else is kInternal
// "postgres: <server message>" and the connection goes on. A statement that fails inside Begin()
// aborts the transaction on the server: Commit() then fails and Rollback() ends it.
#include "sql_database.h"
