// Types of test-server.mjs for the TypeScript tests.
export declare function startHubServer(repos: Record<string, string>, virtual?: Record<string, { path: string; size: number }[]>): Promise<{ url: string; close(): Promise<void> }>;
