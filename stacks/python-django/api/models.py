from django.db import models


class User(models.Model):
    """The benchmark's users table (created by pgarena, so unmanaged: no migrations)."""

    id = models.IntegerField(primary_key=True)
    username = models.CharField(max_length=50, unique=True)
    full_name = models.CharField(max_length=100)
    email = models.CharField(max_length=255, unique=True)
    age = models.SmallIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "users"
