// Every contract fixture (contract/fixtures/*.json) through the SDK's task parser: accepted or
// refused exactly as the fixture says, a refusal naming the field ("<field>: <rule>").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BatonError, parseTaskDocument, taskDocumentText } from '../src/index.js';
import { findTopLevelMember } from '../src/json_span.js';
import { FIXTURES } from './helpers/paths.js';

interface Fixture {
  description: string;
  document?: unknown;
  document_text?: string;
  payload_repeat?: { key: string; char: string; count: number };
  valid: boolean;
  error?: { code: string; field: string };
}

/** The document text per contract/fixtures/README.md ("What a runner checks", step 1). */
function documentText(fileText: string, f: Fixture): string {
  if (f.document_text !== undefined) return f.document_text;
  if (f.payload_repeat !== undefined) {
    const doc = f.document as Record<string, Record<string, unknown>>;
    (doc.payload as Record<string, unknown>)[f.payload_repeat.key] = f.payload_repeat.char.repeat(f.payload_repeat.count);
    return JSON.stringify(doc);
  }
  const raw = findTopLevelMember(fileText, 'document');
  assert.ok(raw !== undefined, 'fixture has a document');
  return raw;
}

// Task-document cases only (contract/fixtures/README.md: valid_*.json, invalid_*.json);
// partitions.json is another kind of vector (test/partitions.test.ts).
const files = readdirSync(FIXTURES).filter((f) => /^(valid|invalid)_.*\.json$/.test(f)).sort();

test('the fixture directory has valid and invalid cases', () => {
  assert.ok(files.filter((f) => f.startsWith('valid_')).length >= 10);
  assert.ok(files.filter((f) => f.startsWith('invalid_')).length >= 40);
});

for (const file of files) {
  test(`fixture ${file}`, () => {
    const fileText = readFileSync(join(FIXTURES, file), 'utf8');
    const f = JSON.parse(fileText) as Fixture;
    const text = documentText(fileText, f);
    if (f.valid) {
      const task = parseTaskDocument(text);
      // The payload keeps its exact bytes, and the document written back parses to the same task.
      assert.equal(task.payloadText, findTopLevelMember(text, 'payload'));
      const again = parseTaskDocument(taskDocumentText(task));
      assert.deepEqual(again, task);
      return;
    }
    assert.throws(() => parseTaskDocument(text), (e: unknown) => {
      assert.ok(e instanceof BatonError, `a BatonError, got ${String(e)}`);
      assert.equal(e.code, f.error?.code);
      assert.equal(e.field, f.error?.field);
      assert.ok(e.message.startsWith(`${f.error?.field}: `), `message names the field: ${e.message}`);
      assert.ok(e.message.length > `${f.error?.field}: `.length + 3, 'and says the rule');
      return true;
    });
  });
}

test('the classic mistakes read well', () => {
  const base = { task_id: 'a1', namespace: 'shop', task_type: 'email', payload: {}, max_retry: 3, delay_seconds: 0, created_at: 1722489600 };
  const msg = (doc: unknown) => {
    try {
      parseTaskDocument(typeof doc === 'string' ? doc : JSON.stringify(doc));
    } catch (e) {
      return (e as Error).message;
    }
    return 'accepted';
  };
  assert.equal(msg({ ...base, max_retry: 99 }), 'max_retry: must be an integer 0..25 (got 99)');
  assert.equal(msg({ ...base, created_at: 1722489600000 }),
    'created_at: must be Unix seconds 946684800..4102444800 (got 1722489600000: milliseconds?)');
  assert.equal(msg({ ...base, payload: [1] }), 'payload: must be a JSON object (got array)');
  const { task_id: _, ...noId } = base;
  assert.equal(msg(noId), 'task_id: required');
  assert.match(msg('{"task_id":'), /^document: not valid JSON: /);
  // Integers beyond 2^64 are reported with the digits written.
  assert.equal(msg(JSON.stringify(base).replace('"max_retry":3', '"max_retry":123456789012345678901234567890')),
    'max_retry: must be an integer 0..25 (got 123456789012345678901234567890)');
});
