"""What an auditor can ask and prove: lineage up and down, and that nothing was altered."""
