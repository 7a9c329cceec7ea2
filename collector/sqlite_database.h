#pragma once
// SqlDatabase on an SQLite file (the embedded default store): WAL journal, NORMAL sync (a commit
// survives a crash of the collector; a power loss may lose the last commits, which the events
// stream's consumer group then delivers again), prepared statements cached by their text.
#include "sql_database.h"
