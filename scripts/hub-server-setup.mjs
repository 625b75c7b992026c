// @ts-check
// Global setup of the browser test tier: the local model hub of @intab/testing (its test-hub.ts: ../shared's
// stories260K as GGUF, Hugging Face, ONNX, full and sharded repositories) for the model store's and the ONNX backend's
// tests. Tests read its address with inject('hubUrl'), and `unreachableUrl`: a loopback port where a server listened
// and no longer does (connections are refused).
import { startTestHub } from '@intab/testing/test-hub';

/** @param {{ provide(key: string, value: unknown): void }} project */
export default async function setup(project) {
  const hub = await startTestHub();
  project.provide('hubUrl', hub.url);
  project.provide('unreachableUrl', hub.unreachableUrl);
  return hub.close;
}
