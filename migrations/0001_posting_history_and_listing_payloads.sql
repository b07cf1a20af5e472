CREATE TABLE "posting_versions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"posting_id" uuid NOT NULL,
	"version" integer NOT NULL,
	"fields" jsonb NOT NULL,
	"body_sha256" text,
	"content_simhash" text,
	"extracted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "postings" ADD COLUMN "listing_payload" jsonb;--> statement-breakpoint
ALTER TABLE "postings" ADD COLUMN "content_simhash" text;--> statement-breakpoint
ALTER TABLE "postings" ADD COLUMN "description_text" text;--> statement-breakpoint
ALTER TABLE "posting_versions" ADD CONSTRAINT "posting_versions_posting_id_postings_id_fk" FOREIGN KEY ("posting_id") REFERENCES "public"."postings"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "posting_versions_posting_version" ON "posting_versions" USING btree ("posting_id","version");