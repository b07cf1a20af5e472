ALTER TABLE "site_alerts" DROP CONSTRAINT "site_alerts_kind_valid";--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "missing_title_count" integer;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "missing_company_count" integer;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "missing_location_count" integer;--> statement-breakpoint
ALTER TABLE "site_alerts" ADD CONSTRAINT "site_alerts_kind_valid" CHECK ("site_alerts"."kind" IN ('listing_drop', 'error_rate', 'fields_missing', 'overdue'));