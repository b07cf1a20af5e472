import type { Database } from '../client.js';

/**
 * A statement prepared once per database handle, on first use: Drizzle builds its SQL once, and
 * its name has Postgres parse and plan it once per connection. For statements on a hot path,
 * where building or planning cost more than running.
 */
export function preparedFor<T>(prepare: (db: Database) => T): (db: Database) => T {
  const statements = new WeakMap<Database, T>();
  return (db) => {
    let statement = statements.get(db);
    if (statement === undefined) {
      statement = prepare(db);
      statements.set(db, statement);
    }
    return statement;
  };
}
