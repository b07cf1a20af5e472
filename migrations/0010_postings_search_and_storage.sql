-- Postings get a stored search vector (title above company above location above description),
-- brought up to date by the scheduler's search indexer for the postings a trigger marks, a GIN
-- index over it, and an index behind every filter the API offers;
-- page bodies get `stored_at` and the hash indexes the body sweeper asks whether a body is still
-- referenced through.
DROP INDEX "postings_run_status_idx";--> statement-breakpoint
DROP INDEX "postings_site_status_idx";--> statement-breakpoint
ALTER TABLE "page_bodies" ADD COLUMN "stored_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "postings" ADD COLUMN "search_pending" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "postings" ADD COLUMN "search" "tsvector";--> statement-breakpoint
-- A search reads the vector of every posting it considers (the match, then the rank). Out of line
-- (TOAST), each read is an index lookup and a chunk fetch, about 13 µs; kept in the row,
-- compressed (MAIN), a few. The planner's estimates for rare words need the longer list of
-- most common lexemes that a statistics target of 1,000 keeps.
ALTER TABLE "postings" ALTER COLUMN "search" SET STORAGE MAIN;--> statement-breakpoint
ALTER TABLE "postings" ALTER COLUMN "search" SET COMPRESSION lz4;--> statement-breakpoint
ALTER TABLE "postings" ALTER COLUMN "search" SET STATISTICS 1000;--> statement-breakpoint
-- The posting's search vector: `GET /postings?q=` ranks over it with ts_rank_cd, whose default
-- weights make a word in the title count ten times one in the description. The description is
-- indexed up to 100,000 characters (a tsvector holds at most 1 MB).
CREATE FUNCTION postings_search_vector(title text, company text, location text, description_text text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A')
      || setweight(to_tsvector('english'::regconfig, coalesce(company, '')), 'B')
      || setweight(to_tsvector('english'::regconfig, coalesce(location, '')), 'C')
      || setweight(to_tsvector('english'::regconfig, left(coalesce(description_text, ''), 100000)), 'D')
$$;--> statement-breakpoint
-- Parsing a description costs Postgres about 0.1 ms per KB: on the crawl's path it would cost
-- every posting that. The triggers only mark the posting; the search indexer (the scheduler's)
-- computes the vectors of marked postings in batches, off the pipeline's path, within seconds.
CREATE FUNCTION postings_search_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.search_pending := true;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER "postings_search_insert" BEFORE INSERT ON "postings"
  FOR EACH ROW
  WHEN (NEW.title IS NOT NULL OR NEW.company IS NOT NULL OR NEW.location IS NOT NULL
        OR NEW.description_text IS NOT NULL)
  EXECUTE FUNCTION postings_search_mark();--> statement-breakpoint
-- Only when a searched column really changes: the pipeline updates a posting's status, run and
-- timestamps several times a run.
CREATE TRIGGER "postings_search_update" BEFORE UPDATE OF "title", "company", "location", "description_text" ON "postings"
  FOR EACH ROW
  WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.company IS DISTINCT FROM NEW.company
        OR OLD.location IS DISTINCT FROM NEW.location OR OLD.description_text IS DISTINCT FROM NEW.description_text)
  EXECUTE FUNCTION postings_search_mark();--> statement-breakpoint
UPDATE "postings" SET "search" = postings_search_vector("title", "company", "location", "description_text");--> statement-breakpoint
CREATE INDEX "posting_versions_body_sha256_idx" ON "posting_versions" USING hash ("body_sha256");--> statement-breakpoint
CREATE INDEX "postings_updated_idx" ON "postings" USING btree ("updated_at","id");--> statement-breakpoint
CREATE INDEX "postings_site_updated_idx" ON "postings" USING btree ("site_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "postings_status_updated_idx" ON "postings" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "postings_remote_updated_idx" ON "postings" USING btree ("updated_at","id") WHERE "postings"."is_remote";--> statement-breakpoint
CREATE INDEX "postings_run_idx" ON "postings" USING btree ("run_id","id");--> statement-breakpoint
CREATE INDEX "postings_body_sha256_idx" ON "postings" USING hash ("body_sha256");--> statement-breakpoint
CREATE INDEX "site_schedules_tenant_idx" ON "site_schedules" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "postings_search_pending_idx" ON "postings" USING btree ("id") WHERE "postings"."search_pending";--> statement-breakpoint
CREATE INDEX "postings_search_idx" ON "postings" USING gin ("search");--> statement-breakpoint
CREATE INDEX "postings_run_status_idx" ON "postings" USING btree ("run_id","status","id");--> statement-breakpoint
CREATE INDEX "postings_site_status_idx" ON "postings" USING btree ("site_id","status","is_remote","updated_at","id");