"""The local stack (S12): the very same handlers, fed by moto, an HTTP bridge, pollers and a scheduler."""
