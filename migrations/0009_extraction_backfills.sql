CREATE TABLE "extraction_backfills" (
	"version" text PRIMARY KEY NOT NULL,
	"status" text DEFAULT 'running' NOT NULL,
	"cursor" uuid,
	"total" integer DEFAULT 0 NOT NULL,
	"done" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"batches" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "extraction_backfills_status_valid" CHECK ("extraction_backfills"."status" IN ('running','completed','superseded'))
);
