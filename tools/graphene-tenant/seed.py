"""Seeds N inspections a minute apart ending two days ago, by 20 inspectors: `python seed.py N`."""
import os
import sys
from datetime import timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from inspections.models import Inspection, Inspector  # noqa: E402

call_command("migrate", run_syncdb=True, verbosity=0)
n = int(sys.argv[1])
inspectors = Inspector.objects.bulk_create([Inspector(name=f"Inspector {i + 1}") for i in range(20)])
start = timezone.now() - timedelta(days=2, minutes=n)
Inspection.objects.bulk_create(
    [
        Inspection(
            title=f"Inspection {i + 1}",
            status=["open", "passed", "failed"][i % 3],
            score=i % 100,
            inspector=inspectors[i % 20],
            updated_at=start + timedelta(minutes=i),
        )
        for i in range(n)
    ],
    batch_size=2000,
)
print(Inspection.objects.count())
