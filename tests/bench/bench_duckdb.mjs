// bench_duckdb.mjs -- the DuckDB side of `make bench-duckdb` (driven by bench_duckdb.py).
//
//   node bench_duckdb.mjs setup SPEC.json   builds the Parquet file and the DuckDB database
//                                           from the CSV export of the demo grid
//   node bench_duckdb.mjs run SPEC.json     runs the queries on both, prints JSON results
//
// SPEC.json: {"csv", "parquet", "db", "points_csv", "threads", "runs",
//             "queries": [{"name", "check", "time"}]}. Each query's "check" SQL is run once
// (its rows are returned for comparison), its "time" SQL once to warm up and then `runs`
// times, each timed alone (milliseconds, wall). Table t is the grid in long format (time,
// lat, lon, value), pts the 1,000 points.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));

async function setup() {
  const inst = await DuckDBInstance.create(spec.db, { threads: String(spec.threads) });
  const con = await inst.connect();
  const cols = "{'time': 'DATE', 'lat': 'DOUBLE', 'lon': 'DOUBLE', 'value': 'FLOAT'}";
  await con.run(`COPY (SELECT * FROM read_csv('${spec.csv}', header = false, columns = ${cols})
                 ORDER BY time, lat, lon)
                 TO '${spec.parquet}' (FORMAT parquet, COMPRESSION zstd)`);
  await con.run(`CREATE OR REPLACE TABLE t AS SELECT * FROM read_parquet('${spec.parquet}')`);
  await con.run(`CREATE OR REPLACE TABLE pts AS SELECT * FROM read_csv('${spec.points_csv}',
                 header = false, columns = {'time': 'DATE', 'lat': 'DOUBLE', 'lon': 'DOUBLE'})`);
  await con.run('CHECKPOINT');
  con.closeSync();
}

async function timeQueries(con) {
  const out = [];
  for (const q of spec.queries) {
    const check = (await con.runAndReadAll(q.check)).getRowsJson();
    await con.runAndReadAll(q.time);
    const ms = [];
    for (let i = 0; i < spec.runs; i++) {
      const t0 = process.hrtime.bigint();
      await con.runAndReadAll(q.time);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    out.push({ name: q.name, check, ms });
  }
  return out;
}

async function run() {
  const result = {};
  // Parquet: a view over the file, points in memory
  {
    const inst = await DuckDBInstance.create(':memory:', { threads: String(spec.threads) });
    const con = await inst.connect();
    await con.run(`CREATE VIEW t AS SELECT * FROM read_parquet('${spec.parquet}')`);
    await con.run(`ATTACH '${spec.db}' AS native (READ_ONLY)`);
    await con.run('CREATE TABLE pts AS SELECT * FROM native.pts');
    result.parquet = await timeQueries(con);
    con.closeSync();
  }
  // native: the database file
  {
    const inst = await DuckDBInstance.create(spec.db, {
      threads: String(spec.threads), access_mode: 'READ_ONLY' });
    const con = await inst.connect();
    result.native = await timeQueries(con);
    const v = (await con.runAndReadAll('SELECT version()')).getRowsJson();
    result.version = v[0][0];
    con.closeSync();
  }
  process.stdout.write(JSON.stringify(result));
}

if (mode === 'setup') await setup();
else if (mode === 'run') await run();
else {
  process.stderr.write('usage: node bench_duckdb.mjs setup|run SPEC.json\n');
  process.exit(2);
}
