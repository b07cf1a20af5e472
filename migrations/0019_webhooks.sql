CREATE TABLE "webhook_attempts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_attempts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"delivery_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"status_code" integer,
	"error" text,
	"retry_after_ms" integer,
	"duration_ms" integer NOT NULL,
	"attempted_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_cursors" (
	"source" text PRIMARY KEY NOT NULL,
	"position" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"event_key" text NOT NULL,
	"payload" jsonb NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"generation" integer DEFAULT 0 NOT NULL,
	"last_status_code" integer,
	"last_error" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_deliveries_status_valid" CHECK ("webhook_deliveries"."status" IN ('pending', 'delivered', 'failed', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" text,
	"url" text NOT NULL,
	"description" text,
	"event_types" text[] DEFAULT '{}'::text[] NOT NULL,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_expires_at" timestamp with time zone,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"type" text NOT NULL,
	"tenant_id" text,
	"event_key" text NOT NULL,
	"payload" jsonb NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_webhook_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."webhook_deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" USING btree ("delivery_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_endpoint_event" ON "webhook_deliveries" USING btree ("endpoint_id","event_key");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_created_idx" ON "webhook_deliveries" USING btree ("endpoint_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_settled_idx" ON "webhook_deliveries" USING btree ("updated_at") WHERE "webhook_deliveries"."status" <> 'pending';--> statement-breakpoint
-- Webhook events other than posting changes (decision 0023), recorded in the transaction that
-- makes them: a run reaching its end, an alert raised or resolved, a document's extraction
-- ending, an LLM extraction ending. The scheduler's dispatcher turns each into one delivery per
-- subscribed endpoint and removes it; what happens while no endpoint subscribes is removed too.
CREATE FUNCTION webhook_outbox_run_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  site record;
BEGIN
  SELECT s.site_name, s.tenant_id INTO site FROM site_schedules s WHERE s.id = NEW.site_schedule_id;
  INSERT INTO webhook_outbox (type, tenant_id, event_key, payload)
  VALUES ('run.finished', site.tenant_id, 'run.finished:' || NEW.id,
    jsonb_build_object(
      'run_id', NEW.run_id, 'task_id', NEW.task_id, 'site_name', site.site_name,
      'trigger', NEW.trigger, 'status', NEW.status, 'message', NEW.message,
      'started_at', NEW.started_at, 'finished_at', NEW.finished_at,
      'ready_count', NEW.ready_count, 'skipped_count', NEW.skipped_count,
      'errors_count', NEW.errors_count, 'expired_count', NEW.expired_count));
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER scrape_runs_webhook_finished AFTER UPDATE OF status ON scrape_runs
FOR EACH ROW
WHEN (OLD.status IN ('queued', 'running') AND NEW.status IN ('succeeded', 'partial', 'failed', 'cancelled'))
EXECUTE FUNCTION webhook_outbox_run_finished();--> statement-breakpoint
CREATE FUNCTION webhook_outbox_alert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  site record;
  event_type text := CASE WHEN NEW.resolved_at IS NULL THEN 'alert.raised' ELSE 'alert.resolved' END;
BEGIN
  SELECT s.site_name, s.tenant_id INTO site FROM site_schedules s WHERE s.id = NEW.site_id;
  INSERT INTO webhook_outbox (type, tenant_id, event_key, payload)
  VALUES (event_type, site.tenant_id, event_type || ':' || NEW.id,
    jsonb_build_object(
      'alert_id', NEW.id, 'site_name', site.site_name, 'kind', NEW.kind, 'message', NEW.message,
      'details', NEW.details, 'raised_at', NEW.raised_at, 'resolved_at', NEW.resolved_at,
      'run_id', (SELECT r.run_id FROM scrape_runs r WHERE r.id = NEW.run_id)));
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER site_alerts_webhook_raised AFTER INSERT ON site_alerts
FOR EACH ROW EXECUTE FUNCTION webhook_outbox_alert();--> statement-breakpoint
CREATE TRIGGER site_alerts_webhook_resolved AFTER UPDATE OF resolved_at ON site_alerts
FOR EACH ROW WHEN (OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL)
EXECUTE FUNCTION webhook_outbox_alert();--> statement-breakpoint
CREATE FUNCTION webhook_outbox_document() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_type text := CASE WHEN NEW.status = 'complete' THEN 'document.extracted' ELSE 'document.failed' END;
BEGIN
  -- A document extracted again (a re-upload, a retried failure) is a new event: the generation
  -- names which extraction this was.
  INSERT INTO webhook_outbox (type, tenant_id, event_key, payload)
  VALUES (event_type, NEW.tenant_id, event_type || ':' || NEW.id || ':' || NEW.generation,
    jsonb_build_object(
      'document_id', NEW.id, 'kind', NEW.kind, 'external_id', NEW.external_id,
      'filename', NEW.filename, 'status', NEW.status, 'attempts', NEW.attempts,
      'error_type', NEW.error_type, 'error_message', NEW.error_message,
      'page_count', NEW.page_count, 'text_chars', NEW.text_chars,
      'completed_at', NEW.completed_at));
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER documents_webhook_ended AFTER UPDATE OF status ON documents
FOR EACH ROW
WHEN (NEW.status IN ('complete', 'failed') AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION webhook_outbox_document();--> statement-breakpoint
CREATE FUNCTION webhook_outbox_extraction() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text := CASE WHEN NEW.subject_type = 'posting'
    THEN (SELECT s.tenant_id FROM postings p JOIN site_schedules s ON s.id = p.site_id WHERE p.id = NEW.subject_id)
    ELSE NEW.tenant_id END;
BEGIN
  INSERT INTO webhook_outbox (type, tenant_id, event_key, payload)
  VALUES ('extraction.finished', tenant,
    'extraction.finished:' || NEW.id || ':' || coalesce(NEW.extracted_version, NEW.version) || ':' || NEW.attempts,
    jsonb_build_object(
      'extraction_id', NEW.id, 'subject_type', NEW.subject_type, 'subject_id', NEW.subject_id,
      'status', NEW.status, 'version', NEW.version, 'model', NEW.model,
      'confidence', NEW.confidence, 'fallback_used', NEW.fallback_used, 'error', NEW.error,
      'extracted_at', NEW.extracted_at));
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER llm_extractions_webhook_finished AFTER UPDATE OF status ON llm_extractions
FOR EACH ROW
WHEN (NEW.status IN ('ready', 'failed', 'skipped') AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION webhook_outbox_extraction();--> statement-breakpoint
-- The dispatcher's place in the change feed starts at its end: endpoints hear of what happens
-- after they are registered.
INSERT INTO webhook_cursors (source, position)
SELECT 'posting_changes', coalesce(max(position), 0) FROM posting_changes;
