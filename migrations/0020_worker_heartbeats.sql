CREATE TABLE "worker_heartbeats" (
	"worker_id" text PRIMARY KEY NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"queues" text[] NOT NULL,
	"status" text NOT NULL,
	"jobs_completed" integer DEFAULT 0 NOT NULL,
	"jobs_failed" integer DEFAULT 0 NOT NULL,
	"jobs_in_flight" integer DEFAULT 0 NOT NULL,
	"current_jobs" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_heartbeat" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_interval_ms" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "worker_heartbeats_last_idx" ON "worker_heartbeats" USING btree ("last_heartbeat");