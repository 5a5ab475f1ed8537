"""The help a small model (the embedded 1.5B one) gets from the loop, in one package.

MemGPT leaves memory to the model; a 1.5B model needs help a hosted model does not. What
help a model gets is read once from the model (`traits.ModelTraits`: compact tool schemas,
narrowed steps, repaired steps, the search before a question, the summarizer's sampling);
the rest of the package asks the traits and runs the policies they name
(`langgraph_memgpt.deps.policies_for`, run by `langgraph_memgpt.turn.policies`), so a hosted
model's turn runs none of this.

- `policy`: the wrappers around a small model's step (`NarrowSteps`, `RepairSteps`).
- `repairs`: the step repaired in order: `voice` (the user's facts said back to them),
  `core_gate` (only lasting statements of the user reach ``human``), `auto_save` (facts
  the model left unsaved, noted in its reply step), `event_notes` (a value the host changed,
  corrected where ``human`` quotes it); `voiced_stream` voices the raw text as it streams.
- `auto_search`: the search the loop makes before a question turn's first step.
"""
