CREATE TABLE "llm_extractions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"subject_type" text NOT NULL,
	"subject_id" uuid NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text NOT NULL,
	"version" text NOT NULL,
	"model" text,
	"confidence" real,
	"fields" jsonb,
	"extracted_version" text,
	"dropped" jsonb,
	"fallback_used" boolean,
	"fallback_reason" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"prompt_tokens" integer DEFAULT 0 NOT NULL,
	"completion_tokens" integer DEFAULT 0 NOT NULL,
	"error" text,
	"correlation_id" text,
	"queued_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"extracted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "llm_extractions_status_valid" CHECK ("llm_extractions"."status" IN ('queued','processing','ready','failed','skipped')),
	CONSTRAINT "llm_extractions_subject_type_valid" CHECK ("llm_extractions"."subject_type" IN ('document','posting'))
);
--> statement-breakpoint
ALTER TABLE "site_schedules" ADD COLUMN "llm_extraction" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "llm_extractions_subject" ON "llm_extractions" USING btree ("subject_type","subject_id");--> statement-breakpoint
CREATE INDEX "llm_extractions_tenant_status_idx" ON "llm_extractions" USING btree ("tenant_id","status");--> statement-breakpoint
CREATE INDEX "llm_extractions_status_updated_idx" ON "llm_extractions" USING btree ("status","updated_at");