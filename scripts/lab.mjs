#!/usr/bin/env node
// The kernel lab: intab's correctness checks and benchmarks on this browser's GPU.
import { serveExample } from './serve-example.mjs';

serveExample('kernel-lab', 'kernel lab');
