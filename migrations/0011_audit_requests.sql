ALTER TABLE "audit_log" ADD COLUMN "target" text;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "status_code" integer;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "request_id" text;--> statement-breakpoint
CREATE INDEX "audit_log_api_key_id_idx" ON "audit_log" USING btree ("api_key_id","id");--> statement-breakpoint
CREATE INDEX "audit_log_target_idx" ON "audit_log" USING btree ("target","id");