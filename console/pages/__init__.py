"""The console's route modules, one per page group; ``console.router`` mounts them all."""
