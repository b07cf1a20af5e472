-- The change feed's events are written once per statement instead of once per row (decision
-- 0020). A row trigger ran PL/pgSQL and an INSERT of its own for every posting a statement
-- created or changed: on `pnpm bench pipeline`, about 0.06 ms of Postgres's 0.8 ms a page.
-- Statement triggers read the statement's rows from its transition tables and write all its
-- events in one INSERT. What each event holds is unchanged: created with the posting's non-null
-- fields; closed, reopened or updated with each changed field's previous and current value; a
-- status the pipeline moves through is no change, and an UPDATE writing the same values records
-- nothing.
--
-- An UPDATE trigger with transition tables cannot name columns, so it runs for every UPDATE of
-- postings, the bookkeeping ones too (a run claiming its postings, search vectors, cross-source
-- keys). Comparing a description left as it was reads it from TOAST twice, so the comparison runs
-- only once a field changed: the row trigger below keeps the old trigger's column list and WHEN
-- clause, and marks the transaction when any row passes them; the statement trigger compares only
-- when marked. The mark lasts until the transaction ends: a statement run inside another (a
-- trigger or function writing postings) must not take away the outer statement's mark, and a
-- transaction's later statements comparing for nothing cost only time.
DROP TRIGGER "posting_changes_insert" ON "postings";--> statement-breakpoint
DROP TRIGGER "posting_changes_update" ON "postings";--> statement-breakpoint
DROP FUNCTION posting_changes_record();--> statement-breakpoint
-- The transaction's first events register it for numbering at commit (migration 0028), with the
-- id of its first event; nothing when the statement recorded none (NULL).
CREATE FUNCTION posting_changes_register(first_change_id bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  txid xid8 := pg_current_xact_id();
BEGIN
  IF first_change_id IS NOT NULL
     AND current_setting('gleaner.change_feed_txid', true) IS DISTINCT FROM txid::text THEN
    INSERT INTO change_feed_pending (txid) VALUES (txid) ON CONFLICT DO NOTHING;
    PERFORM set_config('gleaner.change_feed_txid', txid::text, true);
    PERFORM set_config('gleaner.change_feed_first_id', first_change_id::text, true);
  END IF;
END
$$;--> statement-breakpoint
-- What changed from `o` to `n`, each field under its API name (packages/db/src/posting-fields.ts,
-- spelled out once more; a test fails when they differ) with its previous and current value:
-- an object holding every field, null where it did not change, less those fields. A created
-- posting is the change from no posting (`o` NULL): its non-null fields. Inlined into the
-- statements below, which call it for each row.
CREATE FUNCTION posting_changes_fields(o postings, n postings) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
      'title', CASE WHEN n.title IS DISTINCT FROM o.title THEN jsonb_build_object('previous', o.title, 'current', n.title) END,
      'company', CASE WHEN n.company IS DISTINCT FROM o.company THEN jsonb_build_object('previous', o.company, 'current', n.company) END,
      'location', CASE WHEN n.location IS DISTINCT FROM o.location THEN jsonb_build_object('previous', o.location, 'current', n.location) END,
      'location_city', CASE WHEN n.location_city IS DISTINCT FROM o.location_city THEN jsonb_build_object('previous', o.location_city, 'current', n.location_city) END,
      'location_region', CASE WHEN n.location_region IS DISTINCT FROM o.location_region THEN jsonb_build_object('previous', o.location_region, 'current', n.location_region) END,
      'location_country', CASE WHEN n.location_country IS DISTINCT FROM o.location_country THEN jsonb_build_object('previous', o.location_country, 'current', n.location_country) END,
      'is_remote', CASE WHEN n.is_remote IS DISTINCT FROM o.is_remote THEN jsonb_build_object('previous', o.is_remote, 'current', n.is_remote) END,
      'employment_type', CASE WHEN n.employment_type IS DISTINCT FROM o.employment_type THEN jsonb_build_object('previous', o.employment_type, 'current', n.employment_type) END,
      'salary_min', CASE WHEN n.salary_min IS DISTINCT FROM o.salary_min THEN jsonb_build_object('previous', o.salary_min, 'current', n.salary_min) END,
      'salary_max', CASE WHEN n.salary_max IS DISTINCT FROM o.salary_max THEN jsonb_build_object('previous', o.salary_max, 'current', n.salary_max) END,
      'salary_currency', CASE WHEN n.salary_currency IS DISTINCT FROM o.salary_currency THEN jsonb_build_object('previous', o.salary_currency, 'current', n.salary_currency) END,
      'salary_period', CASE WHEN n.salary_period IS DISTINCT FROM o.salary_period THEN jsonb_build_object('previous', o.salary_period, 'current', n.salary_period) END,
      'date_posted', CASE WHEN n.date_posted IS DISTINCT FROM o.date_posted THEN jsonb_build_object('previous', o.date_posted, 'current', n.date_posted) END,
      'description', CASE WHEN n.description IS DISTINCT FROM o.description THEN jsonb_build_object('previous', o.description, 'current', n.description) END,
      'description_text', CASE WHEN n.description_text IS DISTINCT FROM o.description_text THEN jsonb_build_object('previous', o.description_text, 'current', n.description_text) END,
      'requirements', CASE WHEN n.requirements IS DISTINCT FROM o.requirements THEN jsonb_build_object('previous', o.requirements, 'current', n.requirements) END)
    - array_remove(ARRAY[
      CASE WHEN n.title IS NOT DISTINCT FROM o.title THEN 'title' END,
      CASE WHEN n.company IS NOT DISTINCT FROM o.company THEN 'company' END,
      CASE WHEN n.location IS NOT DISTINCT FROM o.location THEN 'location' END,
      CASE WHEN n.location_city IS NOT DISTINCT FROM o.location_city THEN 'location_city' END,
      CASE WHEN n.location_region IS NOT DISTINCT FROM o.location_region THEN 'location_region' END,
      CASE WHEN n.location_country IS NOT DISTINCT FROM o.location_country THEN 'location_country' END,
      CASE WHEN n.is_remote IS NOT DISTINCT FROM o.is_remote THEN 'is_remote' END,
      CASE WHEN n.employment_type IS NOT DISTINCT FROM o.employment_type THEN 'employment_type' END,
      CASE WHEN n.salary_min IS NOT DISTINCT FROM o.salary_min THEN 'salary_min' END,
      CASE WHEN n.salary_max IS NOT DISTINCT FROM o.salary_max THEN 'salary_max' END,
      CASE WHEN n.salary_currency IS NOT DISTINCT FROM o.salary_currency THEN 'salary_currency' END,
      CASE WHEN n.salary_period IS NOT DISTINCT FROM o.salary_period THEN 'salary_period' END,
      CASE WHEN n.date_posted IS NOT DISTINCT FROM o.date_posted THEN 'date_posted' END,
      CASE WHEN n.description IS NOT DISTINCT FROM o.description THEN 'description' END,
      CASE WHEN n.description_text IS NOT DISTINCT FROM o.description_text THEN 'description_text' END,
      CASE WHEN n.requirements IS NOT DISTINCT FROM o.requirements THEN 'requirements' END], NULL)
$$;--> statement-breakpoint
CREATE FUNCTION posting_changes_record_created() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  first_id bigint;
BEGIN
  WITH recorded AS (
    INSERT INTO posting_changes (posting_id, site_id, type, changes)
    SELECT n.id, n.site_id, 'created', posting_changes_fields(NULL, n) FROM created_postings n
    RETURNING id
  )
  SELECT min(id) INTO first_id FROM recorded;
  PERFORM posting_changes_register(first_id);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE FUNCTION posting_changes_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('gleaner.change_feed_marked', true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config('gleaner.change_feed_marked', 'on', true);
  END IF;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE FUNCTION posting_changes_record_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  first_id bigint;
BEGIN
  IF current_setting('gleaner.change_feed_marked', true) IS DISTINCT FROM 'on' THEN
    RETURN NULL;
  END IF;
  WITH compared AS (
    SELECT n.id, n.site_id,
        CASE
          WHEN n.status = 'expired' AND o.status <> 'expired' THEN 'closed'
          WHEN o.status = 'expired' AND n.status <> 'expired' THEN 'reopened'
          ELSE 'updated'
        END AS type,
        posting_changes_fields(o, n) AS changes
    FROM updated_postings n JOIN previous_postings o ON o.id = n.id
  ), recorded AS (
    INSERT INTO posting_changes (posting_id, site_id, type, changes)
    SELECT id, site_id, type, changes FROM compared
    -- Closing or reopening is a change of its own; an update is one when a field changed.
    WHERE type <> 'updated' OR changes <> '{}'::jsonb
    RETURNING id
  )
  SELECT min(id) INTO first_id FROM recorded;
  PERFORM posting_changes_register(first_id);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "posting_changes_insert" AFTER INSERT ON "postings"
  REFERENCING NEW TABLE AS created_postings
  FOR EACH STATEMENT EXECUTE FUNCTION posting_changes_record_created();--> statement-breakpoint
-- Before the row is written, so that the mark is there when the statement trigger runs; it never
-- changes the row.
CREATE TRIGGER "posting_changes_mark" BEFORE UPDATE OF "status", "title", "company", "location", "location_city", "location_region", "location_country", "is_remote", "employment_type", "salary_min", "salary_max", "salary_currency", "salary_period", "date_posted", "description", "description_text", "requirements" ON "postings"
  FOR EACH ROW
  WHEN ((OLD.status = 'expired') IS DISTINCT FROM (NEW.status = 'expired')
        OR OLD.title IS DISTINCT FROM NEW.title
        OR OLD.company IS DISTINCT FROM NEW.company
        OR OLD.location IS DISTINCT FROM NEW.location
        OR OLD.location_city IS DISTINCT FROM NEW.location_city
        OR OLD.location_region IS DISTINCT FROM NEW.location_region
        OR OLD.location_country IS DISTINCT FROM NEW.location_country
        OR OLD.is_remote IS DISTINCT FROM NEW.is_remote
        OR OLD.employment_type IS DISTINCT FROM NEW.employment_type
        OR OLD.salary_min IS DISTINCT FROM NEW.salary_min
        OR OLD.salary_max IS DISTINCT FROM NEW.salary_max
        OR OLD.salary_currency IS DISTINCT FROM NEW.salary_currency
        OR OLD.salary_period IS DISTINCT FROM NEW.salary_period
        OR OLD.date_posted IS DISTINCT FROM NEW.date_posted
        OR OLD.description IS DISTINCT FROM NEW.description
        OR OLD.description_text IS DISTINCT FROM NEW.description_text
        OR OLD.requirements IS DISTINCT FROM NEW.requirements)
  EXECUTE FUNCTION posting_changes_mark();--> statement-breakpoint
CREATE TRIGGER "posting_changes_update" AFTER UPDATE ON "postings"
  REFERENCING OLD TABLE AS previous_postings NEW TABLE AS updated_postings
  FOR EACH STATEMENT EXECUTE FUNCTION posting_changes_record_updated();
