"""The turn core both faces run, and what a turn needs around it.

``core`` (open the turn, measure, step cap, take the model's message, close a step, the
reply), ``write_ahead`` (the wrapper around every node and tool call), ``admission`` (a run's
input checked), ``threads`` (one run at a time per thread), ``main_context`` (what the next
prompt holds), ``tokens`` (offline counting), ``policies`` (the policy stack around a model
step), ``reply_rules`` and ``streaming`` (whether a reply is sent, and what a client is shown),
``step`` (closing a tool step: does the turn go on) and ``event_turn`` (system events into
the queue, an event turn's outcome).
"""
