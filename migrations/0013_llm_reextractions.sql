CREATE TABLE "llm_reextractions" (
	"version" text PRIMARY KEY NOT NULL,
	"status" text DEFAULT 'running' NOT NULL,
	"cursor" uuid,
	"total" integer DEFAULT 0 NOT NULL,
	"queued" integer DEFAULT 0 NOT NULL,
	"batches" integer DEFAULT 0 NOT NULL,
	"next_batch_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "llm_reextractions_status_valid" CHECK ("llm_reextractions"."status" IN ('running','completed','superseded'))
);
