#pragma once
// SqlDatabase on an SQLite file (the embedded default store): WAL journal, FULL sync (a commit is
// on disk before the collector acks its entries, so not even a power loss loses an acked event),
// prepared statements cached by their text.
#include "sql_database.h"
