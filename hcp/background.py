"""The evaluator and the trigger loop inside `hcp serve`, for embedded mode.

With no Kafka and no Redis configured, a user who starts only the server and posts a
session expects to see its reward, and a policy's training to fire, without starting
two more processes. So embedded `hcp serve` runs both here, on threads of its own, over
the same container: the evaluator tails the database log as `hcp evaluator` does (same
checkpoint name, so a later separate `hcp evaluator` carries on where this one stopped),
and the trigger loop does what `hcp triggers run` does. Exactly-once holds as it does
for the separate processes: rewards are unique per (subject, contract version) in the
database and a firing's claim is unique per dataset cut, so a second evaluator or loop
started by hand only finds nothing left to do.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from hcp.bootstrap import Container
from hcp.services import DEFAULT_GROUP

log = logging.getLogger(__name__)

TRIGGER_ACTOR = "system:triggers"


@dataclass
class InProcessWorkers:
    container: Container
    trigger_interval_s: float = 30.0
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for name, target in (("evaluator", self._evaluate), ("triggers", self._fire_triggers),
                             ("webhooks", self._deliver_webhooks),
                             ("evaluations-out", self._export_evaluations)):
            thread = threading.Thread(target=target, name=f"hcp-{name}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop both loops after their current step (the evaluator stores and commits its
        last batch first)."""
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout_s)

    def _evaluate(self) -> None:
        worker = self.container.evaluator(DEFAULT_GROUP)
        try:
            worker.run(self.stop)
        except Exception:  # the API keeps serving; the log keeps what is left to score
            log.exception("the in-process evaluator stopped; run `hcp evaluator` to go on")
        finally:
            worker.reader.close()

    def _deliver_webhooks(self) -> None:
        try:  # like `hcp webhooks deliver`: the checkpoints are the same
            self.container.integrations.deliver(self.stop)
        except Exception:
            log.exception("the in-process webhook deliverer stopped; run `hcp webhooks deliver`")

    def _export_evaluations(self) -> None:
        exporter = self.container.integrations.evaluation_exporter()
        if exporter is None:  # HCP_OTLP_EVALUATIONS_ENDPOINT is not set
            return
        try:
            exporter.run(self.stop)
        finally:
            exporter.close()

    def _fire_triggers(self) -> None:
        while not self.stop.wait(self.trigger_interval_s):
            try:
                for check in self.container.triggers.evaluate(TRIGGER_ACTOR):
                    if check.fired is not None and check.fired.created:
                        log.info("trigger fired for %s: run %s", check.specialist, check.fired.run_id)
                self.container.triggers.redispatch()
            except Exception:  # one bad round (a locked database, say) is not the last
                log.exception("trigger evaluation failed; retrying in %.0f s",
                              self.trigger_interval_s)
