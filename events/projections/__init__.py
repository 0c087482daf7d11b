"""Projections: every table other than the log is a function of the events.

* ``model``: what a projector returns (row changes), the values a legacy event can only
  bound (``Near``, ``Unrecorded``, ``Subset``), ``Projection`` and ``ProjectionSet``;
* ``sql``: the write path (append the event and apply its projectors in one transaction);
* ``replay``: the same projectors over the log, in memory, and the row-by-row comparison
  with the live tables (``hcp rebuild --check``, the audit);
* ``repair``: writing a replay back (``hcp rebuild``): a dropped table comes back exactly.
"""
