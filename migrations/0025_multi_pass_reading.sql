CREATE TABLE "listing_pages" (
	"run_id" uuid NOT NULL,
	"url" text NOT NULL,
	"position" integer NOT NULL,
	"text" text NOT NULL,
	"links" jsonb NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"candidates" jsonb,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "listing_pages_run_id_url_pk" PRIMARY KEY("run_id","url"),
	CONSTRAINT "listing_pages_state_valid" CHECK ("listing_pages"."state" IN ('pending','read','failed'))
);
--> statement-breakpoint
CREATE TABLE "listing_posts" (
	"run_id" uuid NOT NULL,
	"key" text NOT NULL,
	"link" text,
	"pages" jsonb NOT NULL,
	"fields" jsonb NOT NULL,
	"sources" jsonb NOT NULL,
	"investigation" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "listing_posts_run_id_key_pk" PRIMARY KEY("run_id","key"),
	CONSTRAINT "listing_posts_investigation_valid" CHECK ("listing_posts"."investigation" IS NULL OR "listing_posts"."investigation" IN ('pending','done','failed'))
);
--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD COLUMN "pages_state" text;--> statement-breakpoint
ALTER TABLE "listing_pages" ADD CONSTRAINT "listing_pages_run_id_scrape_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."scrape_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "listing_posts" ADD CONSTRAINT "listing_posts_run_id_scrape_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."scrape_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scrape_runs" ADD CONSTRAINT "scrape_runs_pages_state_valid" CHECK ("scrape_runs"."pages_state" IS NULL OR "scrape_runs"."pages_state" IN ('reading','merging','investigating','done'));