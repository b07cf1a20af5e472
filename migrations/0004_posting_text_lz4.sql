-- A posting's description, its plain text and the stored listing payload are usually over the
-- 2 KB TOAST threshold, so every settle compresses them. pglz (the default) cost Postgres about
-- 0.2 ms per posting on 10 KB descriptions; lz4 about half of that for the same size on disk.
-- New values use lz4; existing rows keep their pglz values, which stay readable.
ALTER TABLE "postings" ALTER COLUMN "description" SET COMPRESSION lz4;--> statement-breakpoint
ALTER TABLE "postings" ALTER COLUMN "description_text" SET COMPRESSION lz4;--> statement-breakpoint
ALTER TABLE "postings" ALTER COLUMN "requirements" SET COMPRESSION lz4;--> statement-breakpoint
ALTER TABLE "postings" ALTER COLUMN "listing_payload" SET COMPRESSION lz4;--> statement-breakpoint
ALTER TABLE "posting_versions" ALTER COLUMN "fields" SET COMPRESSION lz4;
