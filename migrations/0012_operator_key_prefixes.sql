-- An operator's key (ADMIN_API_KEY) was listed and logged under its first 8 characters: 8
-- characters of the secret itself. It is now named by the first 8 hex digits of its SHA-256, as
-- the API names such keys from now on; audit entries that named it the old way are renamed too.
-- A key of the generated form (glk_<prefix>_...) given as ADMIN_API_KEY gets its public prefix
-- back when the API next starts with it.
UPDATE "audit_log" AS "a"
SET "actor" = left("k"."secret_sha256", 8) || substr("a"."actor", length("k"."prefix") + 1)
FROM "api_keys" AS "k"
WHERE "a"."api_key_id" = "k"."id"
  AND "k"."name" = 'ADMIN_API_KEY'
  AND "k"."prefix" <> left("k"."secret_sha256", 8)
  AND starts_with("a"."actor", "k"."prefix");
--> statement-breakpoint
UPDATE "api_keys"
SET "prefix" = left("secret_sha256", 8)
WHERE "name" = 'ADMIN_API_KEY'
  AND "prefix" <> left("secret_sha256", 8);
