-- Schema version 2 of the PostgreSQL offline queue (agent/inbox/pginbox):
-- payloads sealed with a key ring (Options.Keys, package agent/sealed).
-- A sealed payload is longer than the request it holds, and only the
-- store can open it: each row says whether its payload is sealed, and
-- keeps the length of the request, which counts against MaxBytes. The
-- rows of version 1 are in clear, their length that of their payload.
ALTER TABLE a2a_inbox ADD COLUMN sealed boolean NOT NULL DEFAULT false; -- the payload is a sealed value
ALTER TABLE a2a_inbox ADD COLUMN size bigint;                            -- the request's length, in clear
UPDATE a2a_inbox SET size = octet_length(payload);
ALTER TABLE a2a_inbox ALTER COLUMN size SET NOT NULL;
