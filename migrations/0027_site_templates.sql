CREATE TABLE "site_template_labels" (
	"site_id" uuid NOT NULL,
	"shape" text NOT NULL,
	"body_sha256" text NOT NULL,
	"field" text NOT NULL,
	"value" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "site_template_labels_site_id_shape_body_sha256_field_pk" PRIMARY KEY("site_id","shape","body_sha256","field")
);
--> statement-breakpoint
CREATE TABLE "site_templates" (
	"site_id" uuid NOT NULL,
	"version" integer NOT NULL,
	"shape" text NOT NULL,
	"template" jsonb NOT NULL,
	"learned_from" integer NOT NULL,
	"model_calls" integer DEFAULT 0 NOT NULL,
	"misfits" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "site_templates_site_id_version_pk" PRIMARY KEY("site_id","version")
);
--> statement-breakpoint
ALTER TABLE "site_alerts" DROP CONSTRAINT "site_alerts_kind_valid";--> statement-breakpoint
ALTER TABLE "site_template_labels" ADD CONSTRAINT "site_template_labels_site_id_site_schedules_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."site_schedules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "site_templates" ADD CONSTRAINT "site_templates_site_id_site_schedules_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."site_schedules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "site_template_labels_body_idx" ON "site_template_labels" USING btree ("body_sha256");--> statement-breakpoint
ALTER TABLE "site_alerts" ADD CONSTRAINT "site_alerts_kind_valid" CHECK ("site_alerts"."kind" IN ('listing_drop', 'error_rate', 'fields_missing', 'http_errors', 'overdue', 'template_changed'));