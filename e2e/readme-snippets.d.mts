/** A README's ```ts block as a module: where it comes from ('README.md#3'), and its code with the declarations it needs. */
export interface Snippet {
  origin: string;
  code: string;
}
export declare function readmeSnippets(root: string): Snippet[];
