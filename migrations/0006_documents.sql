CREATE TABLE "document_extraction_metrics" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"document_id" uuid NOT NULL,
	"worker_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"duration_ms" integer NOT NULL,
	"bytes" integer NOT NULL,
	"pages" integer,
	"outcome" text NOT NULL,
	"error_type" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "document_worker_heartbeats" (
	"worker_id" text PRIMARY KEY NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"status" text NOT NULL,
	"jobs_completed" integer DEFAULT 0 NOT NULL,
	"jobs_failed" integer DEFAULT 0 NOT NULL,
	"current_document_id" uuid,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_heartbeat" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "documents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" text NOT NULL,
	"kind" text NOT NULL,
	"external_id" text,
	"filename" text,
	"media_type" text,
	"byte_size" integer NOT NULL,
	"content_sha256" text NOT NULL,
	"content" "bytea" NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"generation" integer DEFAULT 0 NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error_type" text,
	"error_message" text,
	"worker_id" text,
	"correlation_id" text,
	"queued_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"next_retry_at" timestamp with time zone,
	"extraction_ms" integer,
	"format" text,
	"page_count" integer,
	"title" text,
	"text" text,
	"text_chars" integer,
	"truncated" boolean,
	"search" "tsvector" GENERATED ALWAYS AS (setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || setweight(to_tsvector('english'::regconfig, left(coalesce(text, ''), 250000)), 'B')) STORED,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "documents_status_valid" CHECK ("documents"."status" IN ('pending','processing','complete','retry_pending','failed')),
	CONSTRAINT "documents_kind_valid" CHECK ("documents"."kind" IN ('resume','posting','other'))
);
--> statement-breakpoint
ALTER TABLE "document_extraction_metrics" ADD CONSTRAINT "document_extraction_metrics_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "document_extraction_metrics_created_idx" ON "document_extraction_metrics" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "document_extraction_metrics_document_idx" ON "document_extraction_metrics" USING btree ("document_id");--> statement-breakpoint
CREATE UNIQUE INDEX "documents_tenant_sha256" ON "documents" USING btree ("tenant_id","content_sha256");--> statement-breakpoint
CREATE INDEX "documents_tenant_created_idx" ON "documents" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "documents_tenant_status_created_idx" ON "documents" USING btree ("tenant_id","status","created_at","id");--> statement-breakpoint
CREATE INDEX "documents_tenant_kind_created_idx" ON "documents" USING btree ("tenant_id","kind","created_at","id");--> statement-breakpoint
CREATE INDEX "documents_status_updated_idx" ON "documents" USING btree ("status","updated_at");--> statement-breakpoint
CREATE INDEX "documents_search_idx" ON "documents" USING gin ("search");