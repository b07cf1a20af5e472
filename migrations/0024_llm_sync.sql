ALTER TABLE "postings" ADD COLUMN "duplicate_of" uuid;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "sync_state" text;--> statement-breakpoint
ALTER TABLE "site_schedules" ADD COLUMN "use_llm_sync" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "postings" ADD CONSTRAINT "postings_duplicate_of_postings_id_fk" FOREIGN KEY ("duplicate_of") REFERENCES "public"."postings"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "postings_duplicate_of_idx" ON "postings" USING btree ("duplicate_of") WHERE "postings"."duplicate_of" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD CONSTRAINT "scrape_runs_sync_state_valid" CHECK ("scrape_runs"."sync_state" IS NULL OR "scrape_runs"."sync_state" IN ('pending','done','failed'));