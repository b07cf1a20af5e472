ALTER TABLE "site_schedules" ALTER COLUMN "next_run_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "scheduled_for" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "scrape_runs_site_slot" ON "scrape_runs" USING btree ("site_schedule_id","scheduled_for");--> statement-breakpoint
-- Sites registered without a next run time were never scheduled: make them due now.
UPDATE "site_schedules" SET "next_run_at" = now() WHERE "next_run_at" IS NULL;
