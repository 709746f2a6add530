from django.db import models
from django.utils import timezone


class Inspector(models.Model):
    name = models.CharField(max_length=100)


class Inspection(models.Model):
    STATUS = [("open", "Open"), ("passed", "Passed"), ("failed", "Failed")]
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=STATUS, default="open")
    score = models.DecimalField(max_digits=6, decimal_places=2, default=0)
    inspector = models.ForeignKey(Inspector, related_name="inspections", on_delete=models.CASCADE)
    # Set by the seed and by the test's changes (a queryset update, as a bulk edit would): not auto_now.
    updated_at = models.DateTimeField(default=timezone.now, db_index=True)
