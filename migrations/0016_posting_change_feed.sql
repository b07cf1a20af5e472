CREATE TABLE "change_feed_clock" (
	"id" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"position" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "change_feed_clock_one_row" CHECK ("change_feed_clock"."id")
);
--> statement-breakpoint
CREATE TABLE "posting_changes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "posting_changes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"position" bigint,
	"posting_id" uuid NOT NULL,
	"site_id" uuid NOT NULL,
	"type" text NOT NULL,
	"changes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "posting_changes_type_valid" CHECK ("posting_changes"."type" IN ('created', 'updated', 'closed', 'reopened'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "posting_changes_position" ON "posting_changes" USING btree ("position");--> statement-breakpoint
CREATE INDEX "posting_changes_site_position_idx" ON "posting_changes" USING btree ("site_id","position");--> statement-breakpoint
CREATE INDEX "posting_changes_unpositioned_idx" ON "posting_changes" USING btree ("id") WHERE "posting_changes"."position" IS NULL;--> statement-breakpoint
INSERT INTO "change_feed_clock" ("id", "position") VALUES (true, 0);--> statement-breakpoint
ALTER TABLE "posting_changes" ALTER COLUMN "changes" SET COMPRESSION lz4;--> statement-breakpoint
-- The transactions with changes not yet numbered: one row each, from the first change it records
-- until it commits (or rolls back). Nothing here outlives a transaction, so it is not logged.
CREATE UNLOGGED TABLE "change_feed_pending" (
  "txid" xid8 PRIMARY KEY
);--> statement-breakpoint
-- Records a posting's change in the outbox, in the transaction that makes it: created (with its
-- non-null fields), closed (to expired), reopened (from expired), or updated (fields changed; a
-- status the pipeline moves through, such as pending or ready, is not a change). Field by field,
-- so that only what changed is read and copied (a description is ~10 KB). The transaction's
-- first change also registers it in change_feed_pending, whose deferred trigger numbers the
-- transaction's changes when it commits. The fields are the one list of posting fields
-- (packages/db/src/posting-fields.ts) spelled out once more; a test fails when they differ.
CREATE FUNCTION posting_changes_record() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  change_type text;
  changed jsonb := '{}';
  txid xid8 := pg_current_xact_id();
BEGIN
  IF TG_OP = 'INSERT' THEN
    change_type := 'created';
    IF NEW.title IS NOT NULL THEN
      changed := changed || jsonb_build_object('title', jsonb_build_object('previous', NULL, 'current', NEW.title));
    END IF;
    IF NEW.company IS NOT NULL THEN
      changed := changed || jsonb_build_object('company', jsonb_build_object('previous', NULL, 'current', NEW.company));
    END IF;
    IF NEW.location IS NOT NULL THEN
      changed := changed || jsonb_build_object('location', jsonb_build_object('previous', NULL, 'current', NEW.location));
    END IF;
    IF NEW.location_city IS NOT NULL THEN
      changed := changed || jsonb_build_object('location_city', jsonb_build_object('previous', NULL, 'current', NEW.location_city));
    END IF;
    IF NEW.location_region IS NOT NULL THEN
      changed := changed || jsonb_build_object('location_region', jsonb_build_object('previous', NULL, 'current', NEW.location_region));
    END IF;
    IF NEW.location_country IS NOT NULL THEN
      changed := changed || jsonb_build_object('location_country', jsonb_build_object('previous', NULL, 'current', NEW.location_country));
    END IF;
    IF NEW.is_remote IS NOT NULL THEN
      changed := changed || jsonb_build_object('is_remote', jsonb_build_object('previous', NULL, 'current', NEW.is_remote));
    END IF;
    IF NEW.employment_type IS NOT NULL THEN
      changed := changed || jsonb_build_object('employment_type', jsonb_build_object('previous', NULL, 'current', NEW.employment_type));
    END IF;
    IF NEW.salary_min IS NOT NULL THEN
      changed := changed || jsonb_build_object('salary_min', jsonb_build_object('previous', NULL, 'current', NEW.salary_min));
    END IF;
    IF NEW.salary_max IS NOT NULL THEN
      changed := changed || jsonb_build_object('salary_max', jsonb_build_object('previous', NULL, 'current', NEW.salary_max));
    END IF;
    IF NEW.salary_currency IS NOT NULL THEN
      changed := changed || jsonb_build_object('salary_currency', jsonb_build_object('previous', NULL, 'current', NEW.salary_currency));
    END IF;
    IF NEW.salary_period IS NOT NULL THEN
      changed := changed || jsonb_build_object('salary_period', jsonb_build_object('previous', NULL, 'current', NEW.salary_period));
    END IF;
    IF NEW.date_posted IS NOT NULL THEN
      changed := changed || jsonb_build_object('date_posted', jsonb_build_object('previous', NULL, 'current', NEW.date_posted));
    END IF;
    IF NEW.description IS NOT NULL THEN
      changed := changed || jsonb_build_object('description', jsonb_build_object('previous', NULL, 'current', NEW.description));
    END IF;
    IF NEW.description_text IS NOT NULL THEN
      changed := changed || jsonb_build_object('description_text', jsonb_build_object('previous', NULL, 'current', NEW.description_text));
    END IF;
    IF NEW.requirements IS NOT NULL THEN
      changed := changed || jsonb_build_object('requirements', jsonb_build_object('previous', NULL, 'current', NEW.requirements));
    END IF;
  ELSE
    change_type := CASE
      WHEN NEW.status = 'expired' AND OLD.status <> 'expired' THEN 'closed'
      WHEN OLD.status = 'expired' AND NEW.status <> 'expired' THEN 'reopened'
      ELSE 'updated'
    END;
    IF NEW.title IS DISTINCT FROM OLD.title THEN
      changed := changed || jsonb_build_object('title', jsonb_build_object('previous', OLD.title, 'current', NEW.title));
    END IF;
    IF NEW.company IS DISTINCT FROM OLD.company THEN
      changed := changed || jsonb_build_object('company', jsonb_build_object('previous', OLD.company, 'current', NEW.company));
    END IF;
    IF NEW.location IS DISTINCT FROM OLD.location THEN
      changed := changed || jsonb_build_object('location', jsonb_build_object('previous', OLD.location, 'current', NEW.location));
    END IF;
    IF NEW.location_city IS DISTINCT FROM OLD.location_city THEN
      changed := changed || jsonb_build_object('location_city', jsonb_build_object('previous', OLD.location_city, 'current', NEW.location_city));
    END IF;
    IF NEW.location_region IS DISTINCT FROM OLD.location_region THEN
      changed := changed || jsonb_build_object('location_region', jsonb_build_object('previous', OLD.location_region, 'current', NEW.location_region));
    END IF;
    IF NEW.location_country IS DISTINCT FROM OLD.location_country THEN
      changed := changed || jsonb_build_object('location_country', jsonb_build_object('previous', OLD.location_country, 'current', NEW.location_country));
    END IF;
    IF NEW.is_remote IS DISTINCT FROM OLD.is_remote THEN
      changed := changed || jsonb_build_object('is_remote', jsonb_build_object('previous', OLD.is_remote, 'current', NEW.is_remote));
    END IF;
    IF NEW.employment_type IS DISTINCT FROM OLD.employment_type THEN
      changed := changed || jsonb_build_object('employment_type', jsonb_build_object('previous', OLD.employment_type, 'current', NEW.employment_type));
    END IF;
    IF NEW.salary_min IS DISTINCT FROM OLD.salary_min THEN
      changed := changed || jsonb_build_object('salary_min', jsonb_build_object('previous', OLD.salary_min, 'current', NEW.salary_min));
    END IF;
    IF NEW.salary_max IS DISTINCT FROM OLD.salary_max THEN
      changed := changed || jsonb_build_object('salary_max', jsonb_build_object('previous', OLD.salary_max, 'current', NEW.salary_max));
    END IF;
    IF NEW.salary_currency IS DISTINCT FROM OLD.salary_currency THEN
      changed := changed || jsonb_build_object('salary_currency', jsonb_build_object('previous', OLD.salary_currency, 'current', NEW.salary_currency));
    END IF;
    IF NEW.salary_period IS DISTINCT FROM OLD.salary_period THEN
      changed := changed || jsonb_build_object('salary_period', jsonb_build_object('previous', OLD.salary_period, 'current', NEW.salary_period));
    END IF;
    IF NEW.date_posted IS DISTINCT FROM OLD.date_posted THEN
      changed := changed || jsonb_build_object('date_posted', jsonb_build_object('previous', OLD.date_posted, 'current', NEW.date_posted));
    END IF;
    IF NEW.description IS DISTINCT FROM OLD.description THEN
      changed := changed || jsonb_build_object('description', jsonb_build_object('previous', OLD.description, 'current', NEW.description));
    END IF;
    IF NEW.description_text IS DISTINCT FROM OLD.description_text THEN
      changed := changed || jsonb_build_object('description_text', jsonb_build_object('previous', OLD.description_text, 'current', NEW.description_text));
    END IF;
    IF NEW.requirements IS DISTINCT FROM OLD.requirements THEN
      changed := changed || jsonb_build_object('requirements', jsonb_build_object('previous', OLD.requirements, 'current', NEW.requirements));
    END IF;
    IF change_type = 'updated' AND changed = '{}'::jsonb THEN
      RETURN NULL;
    END IF;
  END IF;
  INSERT INTO posting_changes (posting_id, site_id, type, changes)
  VALUES (NEW.id, NEW.site_id, change_type, changed);
  IF current_setting('gleaner.change_feed_txid', true) IS DISTINCT FROM txid::text THEN
    INSERT INTO change_feed_pending (txid) VALUES (txid) ON CONFLICT DO NOTHING;
    PERFORM set_config('gleaner.change_feed_txid', txid::text, true);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "posting_changes_insert" AFTER INSERT ON "postings"
  FOR EACH ROW EXECUTE FUNCTION posting_changes_record();--> statement-breakpoint
-- Only when a posting closes, reopens or a field really changes: the pipeline updates a
-- posting's status, run and timestamps several times a run.
CREATE TRIGGER "posting_changes_update" AFTER UPDATE OF "status", "title", "company", "location", "location_city", "location_region", "location_country", "is_remote", "employment_type", "salary_min", "salary_max", "salary_currency", "salary_period", "date_posted", "description", "description_text", "requirements" ON "postings"
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
  EXECUTE FUNCTION posting_changes_record();--> statement-breakpoint
-- Positions are given at commit (a deferred trigger, once per transaction), under the clock
-- row's lock, which the transaction then holds only until its commit is done: the next writer
-- waits for it, so positions follow commit order and a reader never sees a position before all
-- smaller ones. The lock is taken first: whoever holds it is the only one numbering, so the
-- unnumbered events it sees (this transaction's own, in the order written) are all numbered,
-- and the clock moves by exactly as many.
CREATE FUNCTION posting_changes_number() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  last_given bigint;
  numbered bigint;
BEGIN
  DELETE FROM change_feed_pending WHERE txid = NEW.txid;
  SELECT position INTO last_given FROM change_feed_clock FOR UPDATE;
  UPDATE posting_changes c SET position = last_given + o.ordinal
    FROM (SELECT id, row_number() OVER (ORDER BY id) AS ordinal
            FROM posting_changes WHERE position IS NULL) o
   WHERE c.id = o.id;
  GET DIAGNOSTICS numbered = ROW_COUNT;
  IF numbered > 0 THEN
    UPDATE change_feed_clock SET position = last_given + numbered;
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "change_feed_pending_number" AFTER INSERT ON "change_feed_pending"
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION posting_changes_number();
