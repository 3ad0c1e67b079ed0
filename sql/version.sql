-- Run from the build directory:  sqlite3 :memory: < ../sql/version.sql
.load .libs/caterva
SELECT caterva_version() AS version;
