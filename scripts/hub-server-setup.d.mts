// Types of hub-server-setup.mjs for the TypeScript tests that start the local hub server themselves (the Node tier).
export default function setup(project: { provide(key: string, value: unknown): void }): Promise<() => Promise<void>>;
