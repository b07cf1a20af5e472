CREATE TABLE "page_bodies" (
	"sha256" text PRIMARY KEY NOT NULL,
	"content" "bytea" NOT NULL,
	"content_encoding" text DEFAULT 'gzip' NOT NULL,
	"content_type" text,
	"byte_length" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "postings" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"site_id" uuid NOT NULL,
	"external_id" text NOT NULL,
	"url" text NOT NULL,
	"run_id" uuid,
	"status" text DEFAULT 'pending' NOT NULL,
	"body_sha256" text,
	"title" text,
	"company" text,
	"location" text,
	"location_city" text,
	"location_region" text,
	"location_country" text,
	"is_remote" boolean,
	"employment_type" text,
	"salary_min" real,
	"salary_max" real,
	"salary_currency" text,
	"salary_period" text,
	"date_posted" text,
	"description" text,
	"requirements" text,
	"provenance" jsonb,
	"extraction_version" text,
	"error" text,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"fetched_at" timestamp with time zone,
	"extracted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "postings_status_valid" CHECK ("postings"."status" IN ('pending','ready','skipped','error','expired'))
);
--> statement-breakpoint
CREATE TABLE "scrape_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"run_id" text NOT NULL,
	"site_schedule_id" uuid NOT NULL,
	"task_id" text,
	"trigger" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"requested_pages" integer DEFAULT 0 NOT NULL,
	"completed_pages" integer DEFAULT 0 NOT NULL,
	"errors_count" integer DEFAULT 0 NOT NULL,
	"ready_count" integer DEFAULT 0 NOT NULL,
	"skipped_count" integer DEFAULT 0 NOT NULL,
	"expired_count" integer DEFAULT 0 NOT NULL,
	"results_wanted" integer,
	"listing_done" boolean DEFAULT false NOT NULL,
	"listing_complete" boolean DEFAULT false NOT NULL,
	"correlation_id" text,
	"message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "scrape_runs_run_id_unique" UNIQUE("run_id"),
	CONSTRAINT "scrape_runs_status_valid" CHECK ("scrape_runs"."status" IN ('queued','running','succeeded','partial','failed','cancelled')),
	CONSTRAINT "scrape_runs_trigger_valid" CHECK ("scrape_runs"."trigger" IN ('schedule','manual'))
);
--> statement-breakpoint
CREATE TABLE "site_schedules" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"site_name" text NOT NULL,
	"kind" text NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"interval_minutes" integer DEFAULT 60 NOT NULL,
	"last_run_at" timestamp with time zone,
	"next_run_at" timestamp with time zone,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"min_pause_seconds" integer DEFAULT 2 NOT NULL,
	"max_pause_seconds" integer DEFAULT 8 NOT NULL,
	"max_retries" integer DEFAULT 3 NOT NULL,
	"rate_limit_rps" real,
	"max_concurrency" integer DEFAULT 4 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "site_schedules_site_name_unique" UNIQUE("site_name"),
	CONSTRAINT "site_schedules_pause_order" CHECK ("site_schedules"."min_pause_seconds" >= 0 AND "site_schedules"."max_pause_seconds" >= "site_schedules"."min_pause_seconds"),
	CONSTRAINT "site_schedules_interval_positive" CHECK ("site_schedules"."interval_minutes" > 0)
);
--> statement-breakpoint
ALTER TABLE "postings" ADD CONSTRAINT "postings_site_id_site_schedules_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."site_schedules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "postings" ADD CONSTRAINT "postings_run_id_scrape_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."scrape_runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD CONSTRAINT "scrape_runs_site_schedule_id_site_schedules_id_fk" FOREIGN KEY ("site_schedule_id") REFERENCES "public"."site_schedules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "postings_site_external_id" ON "postings" USING btree ("site_id","external_id");--> statement-breakpoint
CREATE INDEX "postings_run_status_idx" ON "postings" USING btree ("run_id","status");--> statement-breakpoint
CREATE INDEX "postings_site_status_idx" ON "postings" USING btree ("site_id","status");--> statement-breakpoint
CREATE UNIQUE INDEX "scrape_runs_one_active_per_site" ON "scrape_runs" USING btree ("site_schedule_id") WHERE "scrape_runs"."status" IN ('queued','running');--> statement-breakpoint
CREATE INDEX "scrape_runs_site_created_idx" ON "scrape_runs" USING btree ("site_schedule_id","created_at");--> statement-breakpoint
CREATE INDEX "site_schedules_due_idx" ON "site_schedules" USING btree ("next_run_at") WHERE "site_schedules"."enabled";