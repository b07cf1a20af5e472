CREATE TABLE "site_alerts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"site_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"run_id" uuid,
	"message" text NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"occurrences" integer DEFAULT 1 NOT NULL,
	"raised_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	"resolved_by_run_id" uuid,
	CONSTRAINT "site_alerts_kind_valid" CHECK ("site_alerts"."kind" IN ('listing_drop'))
);
--> statement-breakpoint
ALTER TABLE "site_alerts" ADD CONSTRAINT "site_alerts_site_id_site_schedules_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."site_schedules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "site_alerts" ADD CONSTRAINT "site_alerts_run_id_scrape_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."scrape_runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "site_alerts" ADD CONSTRAINT "site_alerts_resolved_by_run_id_scrape_runs_id_fk" FOREIGN KEY ("resolved_by_run_id") REFERENCES "public"."scrape_runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "site_alerts_one_open" ON "site_alerts" USING btree ("site_id","kind") WHERE "site_alerts"."resolved_at" IS NULL;--> statement-breakpoint
CREATE INDEX "site_alerts_last_seen_idx" ON "site_alerts" USING btree ("last_seen_at");