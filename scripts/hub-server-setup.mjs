// Global setup of the browser test tier: a local hub server (packages/intab/src/store/test-server.mjs) that serves
// ../shared's stories260K as two repositories, for the model store's tests. Tests read its address with
// inject('hubUrl').
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHubServer } from '../packages/intab/src/store/test-server.mjs';

const SHARED = resolve(process.env.INTAB_SHARED ?? fileURLToPath(new URL('../../shared', import.meta.url)));
const STORIES = join(SHARED, 'models', 'stories260K');

/** @param {{ provide(key: string, value: unknown): void }} project */
export default async function setup(project) {
  const hub = await startHubServer({ 'test/stories': STORIES, 'test/stories-hf': join(STORIES, 'hf') }, { 'test/huge': [{ path: 'huge-model.gguf', size: 64 * 2 ** 30 }] });
  project.provide('hubUrl', hub.url);
  return () => hub.close();
}
