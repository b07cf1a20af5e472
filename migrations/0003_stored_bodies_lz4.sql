ALTER TABLE "page_bodies" ALTER COLUMN "content_encoding" SET DEFAULT 'identity';--> statement-breakpoint
-- Bodies are stored as fetched and compressed by Postgres: lz4 costs a fraction of the
-- worker's gzip and keeps that work off the event loop. Existing gzip rows stay readable.
ALTER TABLE "page_bodies" ALTER COLUMN "content" SET COMPRESSION lz4;
