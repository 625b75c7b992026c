// What the embedding tests embed, on every tier: 20 texts from one word to ~150 tokens (cased words, punctuation,
// digits, accents, subwords, CJK, an emoji), and the cosine similarity they are judged by. No Node imports: the
// browser tier reads them too.

/** 20 texts, from one word to ~150 tokens. */
export const EMBED_INPUTS: readonly string[] = [
  'Embeddings',
  'Hello, world!',
  'What is the capital of France?',
  'search_query: How do I bake sourdough bread at home?',
  'The quick brown fox jumps over the lazy dog near the riverbank.',
  'Café, naïve, résumé and façade keep their letters but lose their accents.',
  'In 2024, the committee approved 3 new proposals (totalling $1,250,000) after a 7-hour meeting.',
  'Photosynthesis converts light energy into chemical energy stored in glucose molecules.',
  'Tokenization splits unbelievably long words such as internationalization into subword pieces.',
  'She said: "Don\'t forget the keys!" — but he had already left for the airport.',
  'The library opens at 9:30 on weekdays; on weekends it opens at noon and closes early.',
  '東京 is the capital of Japan, and its population is larger than that of many countries 🦙.',
  'A neural network learns a function from examples by adjusting its weights to reduce a loss, one small step of gradient descent at a time.',
  'Offline assistants need to find the right note quickly: they embed every chunk of text once, keep the vectors, and compare a question with all of them.',
  'The mitochondria is often called the powerhouse of the cell because it produces most of the energy the cell needs, in the form of adenosine triphosphate, through a process known as cellular respiration.',
  'Mountains form over millions of years as tectonic plates collide and push the crust upward; erosion by wind, water and ice then carves valleys, ridges and peaks, slowly wearing the highest summits down again.',
  'To make a good cup of tea, boil fresh water, warm the pot, add one spoonful of leaves per person and one for the pot, pour the water while it is still bubbling, wait three to five minutes, and then pour it through a strainer into a cup, adding milk or lemon to taste.',
  "The history of computing stretches from the abacus and the mechanical calculators of the seventeenth century, through Charles Babbage's analytical engine and Ada Lovelace's notes on it, to the electronic machines built during the Second World War, the invention of the transistor in 1947, the integrated circuit, and finally the personal computers and phones that most people carry today.",
  'Rivers shape the land they flow through. Near their source, in the mountains, they are narrow and fast, cutting deep channels into rock and carrying stones and gravel downstream. Further down, where the ground is flatter, they slow down, widen and begin to meander across broad valleys, depositing sand and silt on their banks during floods. Finally, close to the sea, many rivers split into several branches and form a delta, where fertile soil has supported farming and large cities for thousands of years.',
  'Good documentation explains why a system exists before it explains how to use it. A reader who understands the problem can guess the shape of the solution, recognize its limits, and tell when it is being used for something it was never meant to do. Examples help, but only when they are small, complete and correct: a snippet that does not run teaches the wrong lesson, and a long example hides the one line that matters. The best reference pages are short, precise and tested, and they link to the longer guides for readers who need the background. Above all, documentation should be kept next to the code it describes, reviewed with it, and changed in the same commit, so that it never drifts into describing a program that no longer exists.',
];

/** Cosine similarity of two vectors. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return dot / Math.sqrt(aa * bb);
}

/**
 * 10 (query, document) pairs for the rerank tests, on every tier: one query against five documents of 1 to ~150
 * tokens (so the order of their scores is a ranking), and five other pairs from a word to the longest text above.
 */
export const RERANK_PAIRS: readonly { query: string; document: string }[] = [
  { query: 'What is the capital of France?', document: 'Paris' },
  { query: 'What is the capital of France?', document: 'Paris is the capital and largest city of France, on the Seine.' },
  { query: 'What is the capital of France?', document: EMBED_INPUTS[7] },
  { query: 'What is the capital of France?', document: EMBED_INPUTS[11] },
  { query: 'What is the capital of France?', document: EMBED_INPUTS[17] },
  { query: 'bread', document: EMBED_INPUTS[3] },
  { query: 'How do rivers form deltas?', document: EMBED_INPUTS[18] },
  { query: 'Why keep documentation next to the code?', document: EMBED_INPUTS[19] },
  { query: 'Café prices in 2024?', document: EMBED_INPUTS[6] },
  { query: 'A neural network learns a function from examples by adjusting its weights; how does gradient descent pick each step?', document: EMBED_INPUTS[12] },
];
