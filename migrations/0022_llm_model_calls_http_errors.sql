ALTER TABLE "site_alerts" DROP CONSTRAINT "site_alerts_kind_valid";--> statement-breakpoint
ALTER TABLE "llm_extractions" ADD COLUMN "model_calls" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "requests_count" integer;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "client_errors_count" integer;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "server_errors_count" integer;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "rate_limited_count" integer;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "unanswered_count" integer;--> statement-breakpoint
ALTER TABLE "site_alerts" ADD CONSTRAINT "site_alerts_kind_valid" CHECK ("site_alerts"."kind" IN ('listing_drop', 'error_rate', 'fields_missing', 'http_errors', 'overdue'));