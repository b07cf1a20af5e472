ALTER TABLE "postings" ADD COLUMN "job_ats_key" text;--> statement-breakpoint
ALTER TABLE "postings" ADD COLUMN "job_fields_key" text;--> statement-breakpoint
CREATE INDEX "postings_job_ats_key_idx" ON "postings" USING btree ("job_ats_key") WHERE "postings"."job_ats_key" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "postings_job_fields_key_idx" ON "postings" USING btree ("job_fields_key") WHERE "postings"."job_fields_key" IS NOT NULL;