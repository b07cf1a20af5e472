import { defineConfig } from 'drizzle-kit';

// `pnpm db:generate` writes SQL migrations into /migrations; never `push`.
export default defineConfig({
  dialect: 'postgresql',
  schema: './packages/db/src/schema.ts',
  out: './migrations',
});
