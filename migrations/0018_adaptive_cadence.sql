ALTER TABLE "site_schedules" ADD COLUMN "adaptive" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "site_schedules" ADD COLUMN "min_interval_minutes" integer;--> statement-breakpoint
ALTER TABLE "site_schedules" ADD COLUMN "max_interval_minutes" integer;--> statement-breakpoint
ALTER TABLE "site_schedules" ADD COLUMN "change_rate_per_hour" real;--> statement-breakpoint
ALTER TABLE "site_schedules" ADD COLUMN "adaptive_interval_minutes" integer;--> statement-breakpoint
ALTER TABLE "site_schedules" ADD CONSTRAINT "site_schedules_adaptive_bounds" CHECK ("site_schedules"."min_interval_minutes" IS NULL OR "site_schedules"."max_interval_minutes" IS NULL OR "site_schedules"."min_interval_minutes" <= "site_schedules"."max_interval_minutes");