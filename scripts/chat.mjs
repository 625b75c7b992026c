#!/usr/bin/env node
// The demo chat page: a model running in the tab on WebGPU, streamed through intab's chat API.
import { serveExample } from './serve-example.mjs';

serveExample('chat', 'chat demo');
