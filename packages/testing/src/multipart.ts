import { randomUUID } from 'node:crypto';

/** A file of a multipart form: in the field `file` unless `field` names another. */
export interface FormFile {
  name: string;
  type: string;
  bytes: Uint8Array;
  field?: string;
}

/**
 * A multipart/form-data body as a browser sends it, for document uploads (`POST /documents`,
 * `POST /documents/batch`): the fields, then the files, encoded once.
 */
export function multipartForm(
  fields: Record<string, string>,
  files: readonly FormFile[] = [],
): { payload: Buffer; contentType: string } {
  const boundary = `gleaner-${randomUUID()}`;
  const parts: Uint8Array[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      ),
    );
  }
  for (const file of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`,
      ),
      file.bytes,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    payload: Buffer.concat(parts),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}
